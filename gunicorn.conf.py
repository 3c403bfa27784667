"""gunicorn's settings that the API's own bounds rely on (read from the working directory).

The request line may be as long as gunicorn allows (8190 bytes), above the API's MEMORY_MAX_URL_LENGTH:
a URI between the two is refused by the API with its JSON error (414 ``uri_too_long``); only a
request line past gunicorn's bound gets gunicorn's own plain 414.
"""

limit_request_line = 8190
