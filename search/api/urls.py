from django.urls import path

from search.api import views

app_name = "search"

urlpatterns = [
    path("conversations/<str:conversation_id>/search/", views.ConversationSearchView.as_view(), name="conversation-search"),
    path("users/<str:user_id>/search/", views.UserSearchView.as_view(), name="user-search"),
]
