"""MkDocs hook: the version of tjap on every page.

Reads ``tjap.__version__`` (the one place the version is written) when the site is built and
puts it into the site name (the navigation's header and every page's title: "Getting started -
tjap 0.2.0") and into the footer of every page.
"""

from __future__ import annotations


def on_config(config):
    """Put ``tjap.__version__`` into the site name and the footer."""
    from tjap import __version__

    if not config.site_name.endswith(__version__):  # `mkdocs serve` may rebuild with this config
        config.site_name = f"{config.site_name} {__version__}"
    config.copyright = f"tjap {__version__} · MIT licence"
    return config
