from django.urls import re_path

from mcp_server.api import views

app_name = "mcp_server"

# With or without the final slash: MCP clients are configured with a bare URL, and a redirect would
# turn their POST into a GET.
urlpatterns = [
    re_path(r"^mcp/?$", views.McpView.as_view(), name="mcp"),
]
