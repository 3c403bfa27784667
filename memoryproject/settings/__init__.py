"""Settings per environment: ``local`` (embedded default), ``test``, ``production``; shared in ``base``."""
