"""How the pages name things: the adapter dropdowns' "base model" entry (None below the web layer)."""

from __future__ import annotations

from app.chat.adapter_names import adapter_named
from app.chat.messages import BASE_MODEL_WORDS

BASE_LABEL = BASE_MODEL_WORDS  # the dropdown entry that means no adapter


BUILT_IN_LABEL = BASE_LABEL + " + {adapter} (part of the model, always on)"


def adapter_of(label: str | None) -> str | None:
    """The adapter a dropdown value names; None for the base model (or nothing chosen): app/chat/adapter_names.py."""
    return adapter_named(label)


def base_label(ctx) -> str:
    """The dropdown entry for no extra adapter: it names the model's own adapter when it has one."""
    own = ctx.deployment.built_in_adapter()
    return BUILT_IN_LABEL.format(adapter=own) if own else BASE_LABEL


def adapter_choices(ctx) -> list[str]:
    """Dropdown entries: the base model (with its own adapter, if any), then every adapter it can use."""
    return [base_label(ctx), *ctx.deployment.adapter_names()]


PARTIAL_MARK = "{name} ⚠ partial: {percent}% applied"  # the chat's label of an adapter the server applies in part


def adapter_label(ctx, name: str) -> str:
    """An adapter's entry in the chat's dropdown: its name, marked when the deployment applies it only in part."""
    audit = ctx.deployment.adapter_audit(name)
    return PARTIAL_MARK.format(name=name, percent=audit.applied_percent) if audit and audit.partial else name


def marked_choices(ctx) -> list[tuple[str, str]]:
    """The chat's dropdown entries as (label, value): adapter_choices with partial adapters marked."""
    return [(adapter_label(ctx, value), value) for value in adapter_choices(ctx)]

NO_ADAPTERS = "none"

# Chat tab
CHAT_PLACEHOLDER = "Ask something and press Enter"
ABOUT_DEMO = "About this demo"
STOP, REGENERATE, CLEAR, CONTINUE = "Stop", "Regenerate", "Clear", "Continue"
OLDER_VERSION, NEWER_VERSION = "‹", "›"  # step between the last reply's versions
VERSION_OF = "{shown}/{count}"
DECODING_LABEL = "Decoding"
DECODING_CHOICES = [("Greedy", "greedy"), ("Sample", "sample")]
DECODING_INFO = ("Greedy: always the likeliest token, so Regenerate gives the same reply (what the server does when "
                 "no sampling is asked for). Sample: random draws shaped by temperature, top-k and top-p.")
TEMPERATURE_INFO = "Randomness of sampling: lower is more focused."
PRESENCE_INFO = ("Subtracted once from every token the reply already used (OpenAI's meaning): keeps small models out "
                 "of loops; text copied from the prompt is not penalised.")
FREQUENCY_INFO = "Subtracted for each time the reply already used a token; above 0 discourages repeated words."
TOP_K_INFO = "Sample from the k likeliest tokens (0 = no limit)."
TOP_P_INFO = "Sample from the smallest set of tokens with this probability (0 or 1 = no limit)."
KEEP_PICTURES_LABEL = "Keep the whole conversation after a new picture"
KEEP_PICTURES_INFO = ("Off: a message with a new picture starts what the model sees (earlier turns stay on screen), "
                      "so its reply is about that picture alone. On: the model also sees the turns before it, for "
                      "models that can hold several pictures' conversations.")
PDF_PAGES_LABEL = "PDF pages"
PDF_PAGES_INFO = ("Pages of an attached PDF sent as pictures, such as 1-3,5 or 4- (empty: every page, up to the "
                  "limit). Videos are sampled to the model's frame count.")
SEED_INFO = "Empty: a new seed for each reply. A number: the same seed and settings give the same reply."
SEED_PLACEHOLDER = "new each reply"

# Chat tab: conversations kept in this browser
CONVERSATIONS = "Conversations"
CONVERSATIONS_INFO = "Kept in this browser only."
NEW_CHAT, DELETE_CHAT = "New chat", "Delete"
CONFIRM_YES, CONFIRM_KEEP, UNDO = "Yes", "Keep it", "Undo"
RENAME_CHAT, CHAT_TITLE = "Rename", "Title (Enter keeps it; empty: the first message)"
SEARCH_CHATS = "Search conversations"  # the search box's label (read by screen readers) and placeholder
SEARCH_CHATS_INFO = "Words in titles, messages and replies."
SEARCH_NONE = "No conversation mentions '{query}'."  # the note under the list when a search finds nothing
SEARCH_TOGGLE = "Search"  # on a phone: the button beside New, Delete, Rename that shows (and hides) the search box
EXPORT_JSON, EXPORT_MARKDOWN, IMPORT_JSON = "Export JSON", "Export Markdown", "Import JSON"

# Compare tab
COMPARE_INTRO = ("One prompt, streamed at the same time through each chosen model/adapter; an image, when given, "
                 "goes to every column.")
COMPARE_IMAGE_LABEL = "Images or a video (optional)"
COMPARE_IMAGE_HEIGHT = 120
COMPARE_NONE = "(none)"
COMPARE_UNUSED = "not used: pick a model or adapter above"
COMPARE_READY = "ready: {model}"  # a picked column before its run: the base model's dropdown entry
COMPARE_READY_ADAPTER = "ready: adapter {adapter}"

# Chat tab: the server a browser session talks to
SERVER_LABEL = "Server"
SERVER_INFO = "Which server this browser talks to; others keep theirs."
ADD_SERVER = "Add a server"
ADD_SERVER_LABEL = "Address"
ADD_SERVER_INFO = "An OpenAI-compatible URL (vLLM, trtllm-serve, SGLang, NIM, Dynamo) or a Triton gRPC HOST:PORT."
ADD_SERVER_PLACEHOLDER = "http://127.0.0.1:8000/v1 or 127.0.0.1:8001"
ADD_SERVER_BUTTON = "Check and add"

# Arena tab
ARENA_INTRO = ("Blind battles: two contestants drawn from the base model and the adapters answer as Model A and Model "
               "B with the same settings, seed and pictures. Vote, and the names are shown. See docs/arena.md.")
ARENA_CONTESTANTS = "Contestants (pairs are drawn so that every pair gets battles)"
ARENA_START, ARENA_ASK, ARENA_NEXT = "Start battle", "Send follow-up to both", "Next prompt of the set"
ARENA_VOTES = (("A", "A is better"), ("B", "B is better"), ("tie", "Tie"), ("both_bad", "Both are bad"))
ARENA_FILTER_PICTURES = [("All battles", ""), ("Text only", "text"), ("With pictures", "pictures")]
ARENA_ALL = "(all)"
