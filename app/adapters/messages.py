"""Sentences the app.adapters package shows to people (errors, warnings, notes); other modules import them."""

# intake.py
MSG_BAD_NAME = ("Adapter name '{name}' is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit.")
MSG_NOT_ADAPTER = ("{where} is not an adapter: it needs adapter_config.json with adapter_model.safetensors "
                   "(or .bin), or model.lora_weights.npy with model.lora_config.npy.")
MSG_ZIP_TOO_BIG = "The zip file is {size}; the limit is {limit}."
MSG_UNPACKED_TOO_BIG = "The zip would unpack to {size}; the limit is {limit}."
MSG_ZIP_RATIO = ("'{member}' unpacks to {size} from {packed} ({ratio:.0f}:1); adapter weights do not compress like "
                 "that, so the zip is refused as a zip bomb.")
MSG_UNPACKED_OVER_LIMIT = "The zip unpacks to more than the {limit} limit; refusing to unpack it."
MSG_NOT_ZIP = "{where} is not a valid zip file."
MSG_ZIP_CUT_OFF = "{where} is damaged or incomplete (its list of files cannot be read); upload it again."
MSG_ZIP_UNSUPPORTED = ("{where} uses a zip feature this server cannot unpack ({feature}); zip the adapter "
                       "folder again with a standard zip tool.")
MSG_ZIP_ABSOLUTE = "The zip holds an absolute path ('{member}'); refusing to unpack it."
MSG_ZIP_TRAVERSAL = "The zip holds a path that leaves its folder ('{member}'); refusing to unpack it."
MSG_ZIP_SYMLINK = "The zip holds a symbolic link ('{member}'); refusing to unpack it."
MSG_ZIP_NESTED = "The zip must hold one adapter (files at the top or in one folder), found '{member}'."
MSG_ZIP_DUPLICATE = "The zip holds '{member}' more than once; refusing to unpack it."
MSG_ZIP_BAD_CRC = "The zip is damaged: '{member}' fails its checksum."
MSG_ZIP_CORRUPT = "The zip is damaged: '{member}' is truncated or corrupt."
MSG_ZIP_ENCRYPTED = ("The zip is password-protected ('{member}' is encrypted); zip the adapter folder again "
                     "without a password.")
MSG_ZIP_METHOD = ("The zip stores '{member}' with compression method {method}, which this server cannot unpack; "
                  "zip the adapter folder again with the standard (deflate) compression.")
MSG_ADD_FAILED = "{where} could not be added: {reason}."
MSG_UNPACK_FAILED = "'{member}' could not be unpacked: {reason}."
MSG_FOLDER_SYMLINK = "{where} is a symbolic link; copy the real file into the adapter folder."

# registry.py
MSG_EXISTS = "An adapter named '{name}' already exists; remove it first or pick another name."
MSG_UNKNOWN = "There is no adapter named '{name}'."
MSG_BF16 = ("{where} holds bfloat16 weights (uint16 bit patterns); the server's lora_weights input is float16. "
            "Convert the PEFT adapter again with --dtype float16.")

# training.py
MSG_NOTHING_TO_CANCEL = "No training is running."
MSG_CANCELLING = "Cancelling the training; nothing will be written."
MSG_ENGINE_RANK = "The engine takes adapters up to rank {max_rank}; pick a rank of {max_rank} or less."
MSG_ENGINE_MODULES = "The engine was built for LoRA on {allowed}; {names} cannot be used with it."
MSG_NAME_TAKEN = "An adapter named '{name}' exists already; pick another name (or remove that adapter first)."

# audit.py
MSG_AUDIT_REFUSED = "{where} cannot be served here: {reasons}"
