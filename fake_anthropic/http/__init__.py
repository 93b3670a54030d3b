"""The HTTP side: the scripted model (or a replayed recording) as a plain ASGI app."""

from fake_anthropic.http.asgi import ASGIApp, Handler, Receive, Scope, Send, asgi_app, read_body

__all__ = ["ASGIApp", "Handler", "Receive", "Scope", "Send", "asgi_app", "read_body"]
