"""The GitHub REST API through PyGithub (the `github` extra), pointed at $GITHUB_API_URL.

Actions sets GITHUB_API_URL to the API of the instance the workflow runs on
(GitHub Enterprise Server included); the tests set it to a local server.
"""

from __future__ import annotations

import os

DEFAULT_API_URL = "https://api.github.com"
# The login GITHUB_TOKEN's comments carry; a personal or app token posts under its own.
ACTIONS_BOT = "github-actions[bot]"


class ApiSetupError(Exception):
    pass


def repository(full_name: str, token: str):
    """A lazy handle on FULL_NAME: no request is made until one is needed."""
    try:
        from github import Auth, Github
    except ImportError:
        raise ApiSetupError(
            "PyGithub is not installed: install optpatch with the `github` extra (pip install \"optpatch[github]\"), "
            "as action.yml does"
        ) from None
    if not token:
        raise ApiSetupError("no token: pass `token` to the action (default: the workflow's GITHUB_TOKEN)")
    api_url = os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL
    client = Github(base_url=api_url.rstrip("/"), auth=Auth.Token(token), lazy=True, retry=None, timeout=30)
    return client.get_repo(full_name)
