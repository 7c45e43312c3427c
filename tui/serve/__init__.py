"""``codecurve serve``: the review app in a browser, one app process per signed-in coder.

- :mod:`~tui.serve.access`: the coders' links (a secret token each; only its hash is
  kept, beside the study) and the rules for a served coder's name.
- :mod:`~tui.serve.backoff`: failed sign-ins of one client are slowed, more and more.
- :mod:`~tui.serve.web`: the web server (aiohttp): every request is refused alike until
  a valid token or session cookie; the websocket runs the app through textual-serve.
- :mod:`~tui.serve.child`: the app process a browser session runs (fixed command line).
- :mod:`~tui.serve.listen`: binding, TLS, the refusals of an unsafe address.

Nothing here imports textual at import time except :mod:`~tui.serve.child`.
"""
