from django.urls import path

from store.api import views

app_name = "store"

urlpatterns = [
    path("store/batch/", views.StoreBatchView.as_view(), name="store-batch"),
    path("store/items/", views.StoreItemView.as_view(), name="store-item"),
    path("store/search/", views.StoreSearchView.as_view(), name="store-search"),
    path("store/namespaces/", views.StoreNamespacesView.as_view(), name="store-namespaces"),
]
