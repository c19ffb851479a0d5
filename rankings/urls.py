"""Routes of the rankings app under /api/v1/."""

from django.urls import path

from rankings.views import RankingsDailyView

urlpatterns = [
    path("datasets/rankings-daily", RankingsDailyView.as_view(), name="datasets-rankings-daily"),
]
