from django.urls import path

from search.api import coverage_views, views

app_name = "search"

# The user search's route (``users/<user_id>/search/``) is ``memory.api.urls``': its view is this
# module's ``UserSearchView`` with the user's extracted memories when asked.

urlpatterns = [
    path("conversations/<str:conversation_id>/search/", views.ConversationSearchView.as_view(), name="conversation-search"),
    path("users/<str:user_id>/search/status/", coverage_views.UserSearchStatusView.as_view(), name="user-search-status"),
]
