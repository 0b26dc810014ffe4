"""Sentences the setup.cpu package shows to people (errors, warnings, notes); other modules import them."""

# runner_demo.py
MSG_NOT_RUNNER = "'{family}' has no runner twin; the runner families are: {known}."

# family_twins.py
MSG_NOT_TEMPLATE_TWIN = "'{family}' has no template twin; the families with one are: {known}."

# twins.py
MSG_NO_TWIN = "{family} has no CPU twin yet; the families with one are: {known}."

# demo.py
MSG_BACKEND_ABORT_RETRY = ("tritonserver's Python backend aborted as its models started (an intermittent upstream "
                           "fault, triton-inference-server/server#8882); starting it once more.")
