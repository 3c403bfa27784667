from django.urls import path

from facts.api import views

app_name = "facts"

# <str:> takes one path segment, so a key is any text without "/" (the services refuse "/" in keys),
# percent-encoded by the client.
urlpatterns = [
    path("users/<str:user_id>/facts/", views.FactListView.as_view(), name="fact-list"),
    # Before the by-key route, which would otherwise take "history" for a key ("history" is a reserved key).
    path("users/<str:user_id>/facts/history/", views.UserFactHistoryView.as_view(), name="fact-history-all"),
    path("users/<str:user_id>/facts/<str:key>/", views.FactDetailView.as_view(), name="fact-detail"),
    path("users/<str:user_id>/facts/<str:key>/history/", views.FactHistoryView.as_view(), name="fact-history"),
]
