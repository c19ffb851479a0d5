"""Endpoints of the budgets app: /workspaces/{id}/budgets and /workspaces/{id}/budgets/{interval}."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from accounts.models import Workspace
from accounts.selectors import workspace_get
from budgets import selectors, services
from budgets.models import INTERVAL_ORDER, WorkspaceBudget
from budgets.serializers import (
    BudgetListResponseSerializer,
    BudgetPutSerializer,
    BudgetResponseSerializer,
    WorkspaceBudgetSerializer,
)
from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.api.serializers import DeletedSerializer
from gateway_project.api.viewsets import OrganizationViewSet

WORKSPACE_PARAM = OpenApiParameter("id", OpenApiTypes.STR, OpenApiParameter.PATH, description="Workspace uuid or slug")
INTERVAL_PARAM = OpenApiParameter(
    "interval", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(INTERVAL_ORDER), description="Budget interval"
)


class WorkspaceBudgetViewSet(OrganizationViewSet):
    """Budgets of a workspace of the caller's organization (another organization's workspace → 404)."""

    queryset = WorkspaceBudget.objects.all()
    serializer_class = WorkspaceBudgetSerializer
    organization_field = "workspace__organization_id"
    pagination_class = None

    def _workspace(self) -> Workspace:
        return workspace_get(organization_id=self.principal.organization_id, id_or_slug=self.kwargs["id"])

    def _interval(self) -> str:
        interval = self.kwargs["interval"]
        if interval not in INTERVAL_ORDER:
            raise validation_error("interval", f"must be one of {', '.join(INTERVAL_ORDER)}")
        return interval

    @staticmethod
    def _one(budget: WorkspaceBudget, include_byok: bool) -> Response:
        return Response({"data": WorkspaceBudgetSerializer(budget).data, "include_byok_in_budgets": include_byok})

    @extend_schema(parameters=[WORKSPACE_PARAM], responses={200: BudgetListResponseSerializer})
    def list(self, request, id=None):
        workspace = self._workspace()
        budgets = selectors.budget_list(workspace=workspace)
        return Response(
            {
                "data": WorkspaceBudgetSerializer(budgets, many=True).data,
                "include_byok_in_budgets": workspace.include_byok_in_budgets,
            }
        )

    @extend_schema(parameters=[WORKSPACE_PARAM, INTERVAL_PARAM], responses={200: BudgetResponseSerializer})
    def retrieve(self, request, id=None, interval=None):
        workspace = self._workspace()
        budget = selectors.budget_get(workspace=workspace, interval=self._interval())
        if budget is None:
            raise GatewayError(404, "Budget not found")
        return self._one(budget, workspace.include_byok_in_budgets)

    @extend_schema(
        parameters=[WORKSPACE_PARAM, INTERVAL_PARAM],
        request=BudgetPutSerializer,
        responses={200: BudgetResponseSerializer},
    )
    def update(self, request, id=None, interval=None):
        workspace = self._workspace()
        interval = self._interval()
        data = self.validated(BudgetPutSerializer)
        budget, include_byok = services.budget_put(
            workspace=workspace,
            interval=interval,
            limit_usd=data["limit_usd"],
            include_byok_in_budgets=data.get("include_byok_in_budgets"),
        )
        return self._one(budget, include_byok)

    @extend_schema(parameters=[WORKSPACE_PARAM, INTERVAL_PARAM], responses={200: DeletedSerializer})
    def destroy(self, request, id=None, interval=None):
        services.budget_delete(workspace=self._workspace(), interval=self._interval())
        return self.deleted_response()
