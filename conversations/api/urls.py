from django.urls import path, re_path

from conversations.api import views

app_name = "api"

urlpatterns = [
    path("", views.ApiRootView.as_view(), name="root"),
    path("conversations/", views.ConversationListView.as_view(), name="conversation-list"),
    path("conversations/<str:conversation_id>/memory/", views.MemoryView.as_view(), name="conversation-memory"),
    path("conversations/<str:conversation_id>/messages/", views.MessageListView.as_view(), name="message-list"),
    path("conversations/<str:conversation_id>/window/", views.LlmWindowView.as_view(), name="conversation-window"),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/",
        views.MessageDetailView.as_view(),
        name="message-detail",
    ),
    path("status/", views.StatusView.as_view(), name="status"),
]

# Last of all the API's routes (memoryproject.urls): a conversation route whose id holds a "/".
slashed_id_urlpatterns = [
    re_path(
        r"^conversations/(?P<conversation_id>[^/]+/.+?)/"
        rf"(?P<rest>(?:{'|'.join(views.CONVERSATION_ROUTES)})/.*)?$",
        views.SlashedConversationIdView.as_view(),
        name="conversation-slashed-id",
    ),
]
