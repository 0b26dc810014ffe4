"""The sentences the download says, one per failure: none of them carries a token."""

MSG_BAD_ID = "'{model_id}' is not a Hugging Face model id: give ORG/NAME, for example llava-hf/llava-1.5-7b-hf."
MSG_BAD_REVISION = "'{revision}' is not a revision: give a branch, tag or commit (letters, digits, . _ - /)."
MSG_NOT_FOUND = ("There is no model {model_id} on the hub at {endpoint} (or it is private and the token given may "
                 "not read it): check the id.")
MSG_NO_REVISION = "The model {model_id} has no branch, tag or commit named '{revision}'."
MSG_GATED_NO_TOKEN = ("{model_id} is a gated model: accept its terms on its page at {endpoint}/{model_id}, then give "
                      "a token (HF_TOKEN, or the Build form's token field).")
MSG_GATED_REFUSED = ("The token given may not read the gated model {model_id}: accept its terms on its page at "
                     "{endpoint}/{model_id} with the token's account.")
MSG_TOKEN_REFUSED = ("The hub at {endpoint} refused the token (401: invalid or expired). Make a new one at "
                     "{endpoint}/settings/tokens and give it as HF_TOKEN or in the Build form.")
MSG_NO_NETWORK = "Cannot reach the hub at {endpoint} ({reason}): check the network, a proxy, or HF_ENDPOINT."
MSG_HUB_ERROR = "The hub at {endpoint} answered {status} for {what}; try again later (Run resumes the download)."
MSG_INTERRUPTED = ("The download of {file} stopped after {done} of {total} ({reason}); press Run (or run the "
                   "command again) to resume it from there.")
MSG_NO_SPACE = ("Not enough disk space in {folder}: the files still to download need {need}, and {free} is free. "
                "Free some space or pick another folder.")
MSG_NO_FILES = "The model {model_id} at {revision} has none of the files a conversion reads (config.json, weights)."
MSG_CHECKSUM = "{file} arrived with the wrong checksum (expected sha256 {expected}); it was removed: press Run again."
MSG_NOT_EMPTY = ("The folder {folder} already holds other files and no download of {model_id}: give an empty or "
                 "new folder to download into.")
MSG_ALREADY = "{model_id} ({commit}) is already downloaded in {folder}: nothing fetched."
MSG_DONE = "Downloaded {model_id} ({commit}): {count} files, {size}, in {folder}."
