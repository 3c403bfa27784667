app_name = "facts"

urlpatterns: list = []
