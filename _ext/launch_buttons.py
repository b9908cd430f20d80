"""Sphinx extension of the book: launch buttons only where there is a repository to launch.

``_config.yml`` names the launchers once (Binder, Colab) and the repository in one place,
``repository.url``. With a URL, every notebook page gets its "launch on Binder / Colab"
buttons and the repository button; while the URL is empty they are switched off here,
before sphinx-book-theme reads them (it cannot build a launch link without a repository
and would fail the build), so the ``-W`` build stays free of warnings.
"""

LAUNCHERS = ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url", "jupyterlite_url")


def switch(options: dict) -> dict:
    """Theme options with the launch and repository buttons on iff a repository URL is set."""
    options = dict(options)
    if (options.get("repository_url") or "").strip():
        options["use_repository_button"] = True
        return options
    launch = dict(options.get("launch_buttons") or {})
    launch.update({key: "" for key in LAUNCHERS if key in launch}, thebe=False)
    options["launch_buttons"] = launch
    options["use_repository_button"] = False
    return options


def _on_config(app, config):
    config.html_theme_options = switch(config.html_theme_options or {})


def setup(app):
    app.connect("config-inited", _on_config)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
