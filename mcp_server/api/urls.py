from django.urls import path

from mcp_server.api import views

app_name = "mcp_server"

urlpatterns = [
    path("mcp/", views.McpView.as_view(), name="mcp"),
]
