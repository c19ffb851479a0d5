"""URL routes of the budgets app, mounted under /api/v1/ by gateway_project/urls.py.

The accounts router owns `workspaces/<id>` and `workspaces/<id>/members...`; these paths only match
`workspaces/<id>/budgets...`, so they never clash with it.
"""

from django.urls import path

from budgets.views import WorkspaceBudgetViewSet

budget_list = WorkspaceBudgetViewSet.as_view({"get": "list"})
budget_detail = WorkspaceBudgetViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"})

urlpatterns = [
    path("workspaces/<str:id>/budgets", budget_list, name="workspace-budgets"),
    path("workspaces/<str:id>/budgets/<str:interval>", budget_detail, name="workspace-budget"),
]
