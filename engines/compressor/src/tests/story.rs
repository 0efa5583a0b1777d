//! A realistic, hand-written debugging session (~60 messages): a login endpoint breaks after a
//! dependency upgrade, the agent reads, runs, searches, edits, and the user adds requests.

use ctxhost_engine_abi::{Message, ToolCall};
use serde_json::json;

fn call(id: &str, name: &str, arguments: serde_json::Value) -> Message {
    Message::assistant_calls(vec![ToolCall::new(id, name, arguments.to_string())])
}

fn say_and_call(text: &str, id: &str, name: &str, arguments: serde_json::Value) -> Message {
    Message {
        content: ctxhost_engine_abi::Content::Text(text.to_owned()),
        ..call(id, name, arguments)
    }
}

const PYTEST_FAIL_1: &str = "============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0
rootdir: /home/dev/shop
collected 14 items

tests/test_auth.py ..F.F                                                  [ 35%]
tests/test_cart.py .........                                              [100%]

=================================== FAILURES ===================================
______________________________ test_login_ok ___________________________________

client = <FlaskClient <Flask 'shop'>>

    def test_login_ok(client):
        resp = client.post('/api/login', json={'user': 'ann', 'password': 'pw'})
>       assert resp.status_code == 200
E       assert 500 == 200

tests/test_auth.py:18: AssertionError
----------------------------- Captured log call ------------------------------
ERROR    shop.app:app.py:1414 Exception on /api/login [POST]
Traceback (most recent call last):
  File \"/home/dev/shop/.venv/lib/python3.11/site-packages/flask/app.py\", line 2190, in wsgi_app
    response = self.full_dispatch_request()
  File \"/home/dev/shop/shop/auth.py\", line 42, in login
    session.modified = True
AttributeError: 'SecureCookieSession' object has no attribute 'modified_at'
=========================== short test summary info ============================
FAILED tests/test_auth.py::test_login_ok - assert 500 == 200
FAILED tests/test_auth.py::test_refresh_token - assert 500 == 200
========================= 2 failed, 12 passed in 0.84s =========================
Exit code: 1";

const AUTH_PY: &str = "import hmac
from datetime import datetime, timezone

from flask import Blueprint, current_app, jsonify, request, session

from shop.tokens import issue_token, verify_refresh
from shop.users import find_user

bp = Blueprint('auth', __name__, url_prefix='/api')


def _check_password(user, password):
    return hmac.compare_digest(user.password_hash, current_app.hasher(password))


@bp.post('/login')
def login():
    data = request.get_json(force=True)
    user = find_user(data.get('user'))
    if user is None or not _check_password(user, data.get('password', '')):
        return jsonify(error='invalid credentials'), 401
    session['uid'] = user.id
    session.modified_at = datetime.now(timezone.utc)
    session.modified = True
    return jsonify(token=issue_token(user)), 200


@bp.post('/refresh')
def refresh():
    token = verify_refresh(request.headers.get('Authorization', ''))
    session.modified_at = datetime.now(timezone.utc)
    return jsonify(token=token), 200
";

const GIT_LOG: &str = "9c1e2f7 Bump flask to 2.3.2 and werkzeug to 2.3.6
4b7d0a3 Add refresh endpoint (#471)
e81f5c2 Store login time in the session
a0c3d19 Fix cart totals rounding (#466)
77f2b8e Initial auth blueprint";

const SEARCH_OUT: &str = "shop/auth.py:23:    session.modified_at = datetime.now(timezone.utc)
shop/auth.py:31:    session.modified_at = datetime.now(timezone.utc)
shop/middleware/audit.py:12:    last = getattr(session, 'modified_at', None)
docs/sessions.md:40:The session keeps `modified_at` for the audit middleware.";

const PYTEST_FAIL_2: &str = "collected 14 items

tests/test_auth.py ....F                                                  [ 35%]
tests/test_cart.py .........                                              [100%]

=================================== FAILURES ===================================
___________________________ test_refresh_token _________________________________
E       KeyError: 'login_at'

shop/middleware/audit.py:14: KeyError
FAILED tests/test_auth.py::test_refresh_token - KeyError: 'login_at'
========================= 1 failed, 13 passed in 0.71s =========================
Exit code: 1";

const ISSUE_PAGE: &str = "Issue #482: Werkzeug 2.3 SecureCookieSession rejects attribute assignment
Opened by mkrause on 2023-07-02

After upgrading to Flask 2.3.2 the session object no longer accepts ad-hoc attributes.
Workaround: store values as keys (session['login_at']) instead of attributes.
See https://flask.palletsprojects.com/en/2.3.x/api/#sessions and the upstream
change in https://github.com/pallets/werkzeug/pull/2622.
Fixed in our fork at commit 5d3e9a1b.";

const PYTEST_PASS: &str = "collected 14 items

tests/test_auth.py .....                                                  [ 35%]
tests/test_cart.py .........                                              [100%]

============================== 14 passed in 0.69s ==============================
Exit code: 0";

const PIP_OUT: &str = "Collecting werkzeug==2.3.7
  Downloading Werkzeug-2.3.7-py3-none-any.whl (242 kB)
Installing collected packages: werkzeug
  Attempting uninstall: werkzeug
    Found existing installation: Werkzeug 2.3.6
    Uninstalling Werkzeug-2.3.6:
      Successfully uninstalled Werkzeug-2.3.6
Successfully installed werkzeug-2.3.7
Exit code: 0";

const MYPY_OUT: &str = "shop/middleware/audit.py:14: error: Value of type \"SessionMixin\" is not indexable  [index]
shop/auth.py:24: error: Incompatible types in assignment (expression has type \"str\", target has type \"datetime\")  [assignment]
Found 2 errors in 2 files (checked 31 source files)
Exit code: 1";

/// The whole session: system message first, the user's latest request last.
pub(crate) fn debugging_session() -> Vec<Message> {
    vec![
        Message::system("You are a careful coding agent working in /home/dev/shop. Use the tools; report briefly."),
        Message::user("The login endpoint returns 500 since the dependency upgrade. Please find out why and fix it. Tests are in tests/test_auth.py."),
        Message::assistant("I'll start by reproducing the failure and looking at the recent history."),
        call("c1", "terminal", json!({"command": "git log --oneline -5"})),
        Message::tool("c1", format!("{GIT_LOG}\nExit code: 0")),
        // ---- the middle starts around here with the default protect_first_n ----
        call("c2", "terminal", json!({"command": "python -m pytest -q tests/test_auth.py"})),
        Message::tool("c2", PYTEST_FAIL_1),
        say_and_call("The session object rejects the new attribute. Let me read the endpoint.", "c3", "read_file", json!({"path": "shop/auth.py"})),
        Message::tool("c3", AUTH_PY),
        Message::user("Don't change the public API of /api/login, clients depend on it. And always run pytest before you tell me it's done."),
        Message::assistant("Understood: the response shape of /api/login stays as it is, and I will run pytest before reporting."),
        Message::user("Can you first check where else modified_at is used?"),
        call("c4", "search_files", json!({"pattern": "modified_at", "path": "."})),
        Message::tool("c4", SEARCH_OUT),
        call("c5", "read_file", json!({"path": "shop/middleware/audit.py"})),
        Message::tool("c5", "import logging\nfrom flask import session\n\nlog = logging.getLogger('audit')\n\n\ndef record(response):\n    last = getattr(session, 'modified_at', None)\n    log.info('request by %s, session touched %s', session.get('uid'), last)\n    stamp = session['login_at']\n    return response\n"),
        Message::assistant("The root cause is that Werkzeug 2.3.6 made SecureCookieSession reject attribute assignment, so `session.modified_at = ...` raises AttributeError. I decided to store the time as a key, session['login_at'], instead of an attribute."),
        call("c6", "edit_file", json!({"path": "shop/auth.py", "old": "session.modified_at = datetime.now(timezone.utc)", "new": "session['login_at'] = datetime.now(timezone.utc).isoformat()"})),
        Message::tool("c6", "Edited shop/auth.py: 2 replacements"),
        call("c7", "terminal", json!({"command": "python -m pytest -q tests/test_auth.py"})),
        Message::tool("c7", PYTEST_FAIL_2),
        Message::assistant("Login passes now; refresh fails because the audit middleware reads login_at before it is set."),
        Message::user("Also check issue #482 at https://github.com/acme/shop/issues/482 - it may be related."),
        call("c8", "web_fetch", json!({"url": "https://github.com/acme/shop/issues/482"})),
        Message::tool("c8", ISSUE_PAGE),
        Message::assistant("Issue #482 confirms it: Werkzeug 2.3 rejects attribute assignment on the session. The fix is the same as ours, keys instead of attributes."),
        call("c9", "edit_file", json!({"path": "shop/middleware/audit.py", "old": "stamp = session['login_at']", "new": "stamp = session.get('login_at')"})),
        Message::tool("c9", "Edited shop/middleware/audit.py: 1 replacement"),
        call("c10", "edit_file", json!({"path": "shop/auth.py", "old": "    session.modified_at = datetime.now(timezone.utc)\n    return jsonify(token=token), 200", "new": "    session['login_at'] = session.get('login_at') or datetime.now(timezone.utc).isoformat()\n    return jsonify(token=token), 200"})),
        Message::tool("c10", "Edited shop/auth.py: 1 replacement"),
        call("c11", "terminal", json!({"command": "pip install werkzeug==2.3.7"})),
        Message::tool("c11", PIP_OUT),
        call("c12", "terminal", json!({"command": "python -m pytest -q"})),
        Message::tool("c12", PYTEST_PASS),
        Message::assistant("All 14 tests pass with werkzeug 2.3.7. The public API of /api/login is unchanged."),
        Message::user("Great. Run mypy too, we keep the codebase type-clean."),
        call("c13", "terminal", json!({"command": "mypy shop"})),
        Message::tool("c13", MYPY_OUT),
        Message::assistant("mypy reports two errors; I'll fix the annotation in shop/auth.py and use session.get in the middleware."),
        call("c14", "edit_file", json!({"path": "shop/auth.py", "old": "from datetime import datetime, timezone", "new": "from datetime import datetime, timezone  # login_at is stored as ISO text"})),
        Message::tool("c14", "Edited shop/auth.py: 1 replacement"),
        call("c15", "read_file", json!({"path": "shop/types.py", "offset": 1})),
        Message::tool("c15", "from typing import TypedDict\n\n\nclass SessionData(TypedDict, total=False):\n    uid: int\n    login_at: datetime\n"),
        call("c16", "edit_file", json!({"path": "shop/types.py", "old": "    login_at: datetime", "new": "    login_at: str"})),
        Message::tool("c16", "Edited shop/types.py: 1 replacement"),
        call("c17", "terminal", json!({"command": "mypy shop"})),
        Message::tool("c17", "Success: no issues found in 31 source files\nExit code: 0"),
        call("c18", "terminal", json!({"command": "python -m pytest -q"})),
        Message::tool("c18", PYTEST_PASS),
        Message::assistant("mypy is clean and all tests pass."),
        Message::user("Commit it with the message 'Fix session attributes for werkzeug 2.3 (#482)' and pin werkzeug==2.3.7 in requirements.txt."),
        call("c19", "edit_file", json!({"path": "requirements.txt", "old": "werkzeug==2.3.6", "new": "werkzeug==2.3.7"})),
        Message::tool("c19", "Edited requirements.txt: 1 replacement"),
        call("c20", "terminal", json!({"command": "git commit -am 'Fix session attributes for werkzeug 2.3 (#482)'"})),
        Message::tool("c20", "[main 3fa85c0] Fix session attributes for werkzeug 2.3 (#482)\n 4 files changed, 9 insertions(+), 6 deletions(-)\nExit code: 0"),
        Message::assistant("Committed as 3fa85c0 on main, with werkzeug pinned to 2.3.7 in requirements.txt."),
        // ---- the tail ----
        Message::user("Thanks. Now bump the version to v1.4.1 in pyproject.toml and add a CHANGELOG.md entry for the fix."),
        call("c21", "read_file", json!({"path": "pyproject.toml"})),
        Message::tool("c21", "[project]\nname = \"shop\"\nversion = \"1.4.0\"\nrequires-python = \">=3.11\"\n"),
        call("c22", "edit_file", json!({"path": "pyproject.toml", "old": "version = \"1.4.0\"", "new": "version = \"1.4.1\""})),
        Message::tool("c22", "Edited pyproject.toml: 1 replacement"),
        Message::assistant("Version bumped to 1.4.1. Adding the changelog entry next."),
    ]
}
