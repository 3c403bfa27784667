app_name = "summaries"

urlpatterns: list = []
