from django.urls import path

from checkpoints.api import views

app_name = "checkpoints"

urlpatterns = [
    path("conversations/<str:conversation_id>/checkpoints/", views.CheckpointListView.as_view(), name="checkpoint-list"),
    # Before the by-id route, which would otherwise take "latest" for a checkpoint id.
    path(
        "conversations/<str:conversation_id>/checkpoints/latest/",
        views.CheckpointLatestView.as_view(),
        name="checkpoint-latest",
    ),
    path(
        "conversations/<str:conversation_id>/checkpoints/<str:checkpoint_id>/",
        views.CheckpointDetailView.as_view(),
        name="checkpoint-detail",
    ),
    path(
        "conversations/<str:conversation_id>/checkpoints/<str:checkpoint_id>/writes/",
        views.CheckpointWritesView.as_view(),
        name="checkpoint-writes",
    ),
]
