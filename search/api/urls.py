app_name = "search"

urlpatterns: list = []
