from django.urls import path

from chat.api import views

app_name = "chat"

urlpatterns = [
    path("conversations/<str:conversation_id>/chat/", views.ChatView.as_view(), name="conversation-chat"),
]
