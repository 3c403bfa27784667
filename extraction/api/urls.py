from django.urls import path

from extraction.api import views

app_name = "extraction"

urlpatterns = [
    path("users/<str:user_id>/memories/", views.MemoryListView.as_view(), name="memory-list"),
    path("users/<str:user_id>/memories/<str:memory_id>/", views.MemoryDetailView.as_view(), name="memory-detail"),
]
