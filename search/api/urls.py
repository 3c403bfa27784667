from django.urls import path

from search.api import coverage_views, views

app_name = "search"

urlpatterns = [
    path("conversations/<str:conversation_id>/search/", views.ConversationSearchView.as_view(), name="conversation-search"),
    path("users/<str:user_id>/search/", views.UserSearchView.as_view(), name="user-search"),
    path("users/<str:user_id>/search/status/", coverage_views.UserSearchStatusView.as_view(), name="user-search-status"),
]
