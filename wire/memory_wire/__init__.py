"""The wire format the memory service and its clients share: how a LangChain message is sent to the
service and read back (``memory_wire.messages``). Neither side owns it: the service and the client
both depend on this package, and neither on the other."""

__version__ = "1.0.0"
