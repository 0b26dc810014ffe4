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

# Videos (app/vision/video.py)
MSG_VIDEO_EMPTY = "{name} is empty (0 bytes)."
MSG_VIDEO_TOO_LARGE_BYTES = "{name} is {size_mb:.1f} MB; videos may be at most {limit_mb:.0f} MB."
MSG_VIDEO_UNSUPPORTED_FORMAT = "{name} is not an MP4, WebM or GIF video. Upload the video in one of those formats."
MSG_VIDEO_UNREADABLE = "{name} could not be read as a video ({detail}). Export it again as MP4 and upload it."
MSG_VIDEO_TOO_LONG = ("{name} lasts {seconds:.1f} seconds; videos may last at most {limit:.0f} seconds. "
                      "Trim it and upload it again.")
MSG_VIDEO_TOO_MANY_FRAMES = ("{name} has {frames:,} frames; videos may have at most {limit:,}. "
                             "Trim it or lower its frame rate.")
MSG_VIDEO_FRAME_TOO_LARGE = ("{name} is {width} x {height} pixels per frame; video frames may have at most "
                             "{limit_mp:.1f} megapixels. Scale it down and upload it again.")
MSG_VIDEO_NO_FRAMES = "{name} holds no frame that can be decoded. Export it again as MP4 and upload it."

# PDF documents (app/vision/documents.py)
MSG_PDF_EMPTY = "{name} is empty (0 bytes)."
MSG_PDF_TOO_LARGE_BYTES = "{name} is {size_mb:.1f} MB; PDF files may be at most {limit_mb:.0f} MB."
MSG_PDF_NOT_A_PDF = "{name} is not a PDF file (it does not start with %PDF). Upload a PDF or page images."
MSG_PDF_ENCRYPTED = ("{name} is protected by a password. Save an unprotected copy (print it to a new PDF) "
                     "and upload that.")
MSG_PDF_BROKEN = "{name} is damaged and cannot be opened ({detail}). Export it again as PDF and upload it."
MSG_PDF_NO_PAGES = "{name} has no pages."
MSG_PDF_TOO_MANY_PAGES = ("{name} has {count} pages; at most {limit} pages are read at once. "
                          "Give a page range such as 1-{limit}.")
MSG_PDF_RANGE_TOO_LONG = "The page range {pages} holds {count} pages; at most {limit} pages are read at once."
MSG_PDF_BAD_RANGE = "'{pages}' is not a page range. Write pages and ranges like 1-3,5."
MSG_PDF_PAGE_OUT_OF_RANGE = "{name} has {count} page(s); there is no page {page}."
MSG_PDF_RENDER_FAILED = "Page {page} of {name} could not be rendered ({detail})."
