"""The app's few style rules: quiet reply figures, no error overlays over inputs, a narrow-screen layout."""

APP_CSS = """
/* Gradio's semibold Source Sans Pro file is a few-glyph subset whose "A" and "B" are small capitals (the
   other letters fall back to another font): bold text uses the complete bold file it ships instead. */
@font-face {
    font-family: "Source Sans Pro"; font-weight: 600; font-style: normal;
    src: url("static/fonts/SourceSansPro/SourceSansPro-Bold.woff2") format("woff2");
}
/* A refusal shows as a toast; Gradio's "Error" overlay would also cover the outputs (the conversation,
   the input box) until its small x is clicked, so it is not shown anywhere in the app. */
.wrap:has(> .clear-status), .wrap:has(> .error) { display: none !important; }

/* The figures under a reply and a Compare column: small and quiet. */
.reply-figures, [id^="compare-state-"] small {
    color: var(--body-text-color-subdued); font-size: var(--text-sm); font-weight: normal;
}

/* The adapter that answered: a label in the figures line, seen at a glance. */
.reply-adapter {
    color: var(--color-accent); border: 1px solid var(--color-accent); border-radius: var(--radius-sm);
    padding: 0 0.35em; font-weight: 600;
}

/* What the CPU encoder found in a reply's images: folded under the reply, quiet like the figures. */
.model-saw { font-size: var(--text-sm); color: var(--body-text-color-subdued); margin-top: var(--spacing-md); }
.model-saw summary { cursor: pointer; }
.model-saw p { margin: var(--spacing-sm) 0 0 0; }
.keep-typed-keys { display: none !important; }  /* runs a page script only (pages/table_typing.py) */

/* The training loss plot: Gradio's Vega chart keeps the layout of its first, empty drawing, so the y axis's tick
   labels and title ("loss") fall left of the drawing and were cut to a sliver. Room on the left,
   drawn outside. */
#train-loss .vega-embed { margin-left: 3.5em; width: auto !important; }
#train-loss .vega-embed svg { overflow: visible; }

/* A plan's commands: a monospace box whose long lines wrap where a shell would accept them. */
.plan-box textarea { font-family: var(--font-mono); font-size: var(--text-sm); white-space: pre-wrap; }

#app-title { margin: var(--size-2) 0; font-size: var(--text-xxl); font-weight: 600; }

/* The chat's controls line up with the bottom of the dropdowns beside them. */
#chat-controls, #conversations { align-items: flex-end; }
#conversations > button { white-space: nowrap; }
/* The conversation list (history_panel): entries to click, no radio dots; the shown conversation is marked. On a
   wide screen a column (below New, Delete, Rename and the search box) that scrolls when long; narrower, one line
   above the chat that scrolls sideways, so the message box keeps its place on the first screen. */
#conversation-list .wrap { gap: var(--spacing-xs); flex-wrap: nowrap; }
#conversation-list label { margin: 0; }
#conversation-list input[type=radio] { position: absolute; opacity: 0; width: 1px; height: 1px; }
#conversation-list label.selected { font-weight: 600; }
@media (max-width: 999px) {
    #conversation-list .wrap { flex-direction: row; overflow-x: auto; }
    #conversation-list label { flex: 0 0 auto; white-space: nowrap; }
}
/* The search button is the phone's way to the search box (below); wider screens show the box itself. */
#chat-search-toggle { display: none !important; }
/* The conversation list beside the chat (pages/chat.py): a column at the left on a wide screen, its list, search
   box and buttons one under the other; under 1000 px the column is a block above the chat, as the list was. */
@media (min-width: 1000px) {
    #chat-sidebar { flex: 0 0 260px !important; max-width: 260px; }
    #chat-sidebar #conversations { flex-wrap: wrap; }
    #chat-sidebar #conversations > .form, #chat-sidebar #chat-search-column {
        flex: 1 1 100% !important; min-width: 0 !important;
    }
    #chat-sidebar #conversations > button {
        flex: 1 1 28% !important; min-width: 0 !important; padding-left: var(--spacing-sm);
        padding-right: var(--spacing-sm);
    }
    #chat-sidebar #conversations > .form { order: 1; }
    #chat-sidebar #conversation-list .wrap {
        flex-direction: column; max-height: calc(100vh - 400px); overflow-y: auto;
    }
    #chat-sidebar #conversation-list label { width: 100%; white-space: normal; }
    /* the list's row is no longer above the conversation: it takes that room (chat.CHAT_HEIGHT leaves 470 px) */
    #chatbot { height: max(260px, calc(100vh - 390px)) !important; }
}
@media (max-width: 999px) {
    #chat-layout { flex-direction: column; flex-wrap: nowrap; }
    #chat-sidebar, #chat-main { flex: none !important; width: 100% !important; min-width: 0 !important; }
}
/* The last reply's version stepper ‹ n/m ›: narrow buttons, the count plain text. */
#older-version, #newer-version, #reply-version { padding-left: var(--spacing-md); padding-right: var(--spacing-md); }
#reply-version:disabled { opacity: 1; cursor: default; border-color: transparent; background: none; box-shadow: none; }

/* Narrow screens: the input full width, the adapter dropdown under it with the buttons below, the title and
   the conversation a little smaller so the input stays in view. */
@media (max-width: 600px) {
    #app-title { font-size: var(--text-xl); margin-top: 0; }
    /* the six tabs take two rows (overflow "wrap"); short rows keep the message box in view */
    [role=tablist] { height: auto; }
    [role=tablist] > button { height: var(--size-7); }
    #chat-controls, #conversations { flex-wrap: wrap; }
    #conversations > .form { flex: 1 1 100% !important; }
    /* New, Delete, Rename and Search on one line, with room to spare (a scroll bar may take some) */
    #conversations { column-gap: var(--spacing-md); }
    #conversations > button {
        flex: 1 1 20% !important; min-width: 0 !important; padding-left: var(--spacing-sm);
        padding-right: var(--spacing-sm);
    }
    #conversations > #chat-search-toggle { display: inline-flex !important; }
    #conversations .info-text { display: none; }
    /* the list and New, Delete, Rename fill two lines and the message box has about 8 px to spare at 400x860
       (tests/browser/test_layout.py): a line for the search box would push the box out of view, so it is shown
       only once the search button is pressed (history_panel.TOGGLE_SEARCH_JS), on a line under the buttons */
    #chat-search-column:not(.shown) { display: none !important; }
    #chat-search-column { flex: 1 1 100% !important; order: 1; }
    /* the list's label stays for screen readers; the list itself says "New chat" or the conversation's title */
    #conversation-list [data-testid="block-info"] {
        position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap;
    }
    #chat-controls > .form { flex: 1 1 100% !important; }
    /* Compare: the prompt and the attached pictures each take the whole width, one under the other */
    #compare-inputs { flex-wrap: wrap; }
    #compare-inputs > * { flex: 1 1 100% !important; }
    /* desktop: chat.CHAT_HEIGHT; here what the screen leaves under the title, tabs, status line, conversation list
       and notes (about 430 px) and above the message box (about 90 px), so the box stays in view at 400x800 too
       (tests/browser/test_layout.py); dvh: the screen a phone shows with its address bar */
    #chatbot { height: clamp(200px, calc(100dvh - 520px), 460px) !important; }
    #chat-controls > button { flex: 1 1 25% !important; min-width: 0 !important; }
}
"""
