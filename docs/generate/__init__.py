"""Pages of the documentation generated from the code: the configuration reference from the settings
modules (``configuration``), the API guide from a scripted run of the API (``api_guide``).

``python -m docs.generate`` regenerates both; ``python -m docs.generate configuration`` or
``api_guide`` one of them; ``--check`` only says whether the configuration page is up to date.
"""
