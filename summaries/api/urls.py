from django.urls import path

from summaries.api import views

app_name = "summaries"

urlpatterns = [
    path("conversations/<str:conversation_id>/summaries/", views.SummaryListView.as_view(), name="summary-list"),
]
