"""The memory features' routes, in the API's ``api`` namespace beside the conversations' own, and in
``search``'s beside the search's own (``memoryproject.urls`` joins the lists)."""

from django.urls import path

from memory.api import views

urlpatterns = [
    path("conversations/<str:conversation_id>/", views.ConversationDetailView.as_view(), name="conversation-detail"),
    path("conversations/<str:conversation_id>/context/", views.ContextView.as_view(), name="conversation-context"),
    path("users/<str:user_id>/", views.UserView.as_view(), name="user-detail"),
]

# The user search, with the user's memories when asked (``search:user-search``).
search_urlpatterns = [
    path("users/<str:user_id>/search/", views.UserSearchView.as_view(), name="user-search"),
]
