"""What app.vision says to people: its messages, in one place."""

MSG_IMAGE_EMPTY = "{name} is empty (0 bytes)."
MSG_IMAGE_NOT_AN_IMAGE = "{name} is not an image. Upload a PNG, JPEG, WebP, BMP or GIF file."
MSG_IMAGE_UNSUPPORTED_FORMAT = "{name} is a {format} image; upload a PNG, JPEG, WebP, BMP or GIF file instead."
MSG_IMAGE_TOO_MANY_PIXELS = (
    "{name} is {width} x {height} pixels ({megapixels:.0f} megapixels); images may have at most "
    "{limit_mp:.0f} megapixels. Scale it down and upload it again."
)
MSG_IMAGE_BOMB = (
    "{name} declares far more pixels than an image may have (at most {limit_mp:.0f} megapixels); "
    "it was not decoded."
)
MSG_IMAGE_TRUNCATED = "{name} is truncated or damaged and cannot be read completely. Upload the complete file."
MSG_IMAGE_UNREADABLE = "{name} could not be decoded ({detail})."
MSG_TOO_MANY_IMAGES = "This deployment takes at most {limit} image(s) per message; {count} were attached."
MSG_UNKNOWN_FAMILY = "The deployment names image family '{family}', which this app does not know."
MSG_IMAGE_INPUT_UNSUPPORTED = (
    "The deployment takes images as {kind}, which this app cannot send yet (it sends image_input tensors)."
)
