"""The guard in front of everything served on the app's port (plain ASGI: no Gradio, no FastAPI).

- **Host names**: only requests whose `Host` names this app are served: its bound address; localhost,
  127.0.0.1 and [::1] when it is bound to loopback; the machine's names and addresses when it is bound
  to every address (0.0.0.0 / ::); and the names given with `--allowed-hosts`. A web page on another
  domain that points its name at this machine (DNS rebinding) gets 421.
- **Origins**: a request that carries an `Origin` (browsers send one on every cross-site request and on
  every POST) must come from a page on one of those host names; others get 403, and since the guard
  runs before Gradio's CORS middleware, no answer to a foreign page carries Access-Control-Allow-Origin.
- **Bodies**: each route has a body limit counted as the bytes arrive (a Content-Length above it is
  refused before reading); a body that stalls is answered 408 and the connection closed; bodies above
  `large_body_bytes` hold one of a few slots while they arrive, so many huge uploads at once get 503
  instead of the app's memory. A client that hangs up mid-body ends its request quietly (no traceback).
- **Logins** (with --auth-file): failed logins (Gradio's POST /login, 401s of /v1) are counted per client
  address; past the limit in the window the address gets 429 with Retry-After.
- **Unread jobs**: a Gradio job (POST /gradio_api/call/<api> or /queue/join) whose result nobody starts
  reading within a grace time is cancelled through the callbacks the app gives `JobWatch`.

Every refusal is JSON, `{"error": {"message": ..., "type": ...}}`, with one plain sentence.

Starlette puts middleware given to the app *inside* Gradio's CORS and compression middleware; the app
installs the guard there (so it is active from the first request) and also wraps the finished stack
(`wrap_outermost`), sharing one `Guard`. Whichever instance sees a request first handles it; the other
passes it through.
"""

from app.api.http_guard.hosts import (
           allowed_host_names,
           host_header_name,
           machine_names,
           origin_name,
)
from app.api.http_guard.jobs import JobWatch
from app.api.http_guard.logins import FailureLimiter
from app.api.http_guard.middleware import (
           Guard,
           GuardSettings,
           HttpGuardMiddleware,
           app_middleware,
           wrap_outermost,
)
from app.api.http_guard.replies import error_json, size_text

__all__ = ["FailureLimiter", "Guard", "GuardSettings", "HttpGuardMiddleware", "JobWatch", "allowed_host_names",
           "app_middleware", "error_json", "host_header_name", "machine_names", "origin_name",
           "size_text", "wrap_outermost"]
