"""The memory features' routes, in the API's ``api`` namespace beside the conversations' own
(``memoryproject.urls`` joins the two lists)."""

from django.urls import path

from memory.api import views

urlpatterns = [
    path("conversations/<str:conversation_id>/", views.ConversationDetailView.as_view(), name="conversation-detail"),
    path("conversations/<str:conversation_id>/context/", views.ContextView.as_view(), name="conversation-context"),
    path("users/<str:user_id>/", views.UserView.as_view(), name="user-detail"),
]
