"""The World Info sync records in settings.json: read back as written, bad ones refused in words."""

from __future__ import annotations

import pytest

from dle_desktop.errors import ConfigError
from dle_desktop.state.settings.model import Settings, settings_from_mapping
from dle_desktop.state.settings.records import WiSyncConfig

GOOD = {"book": "Saffre", "vault": "main", "folder": "Places/", "st_root": "/srv/st", "st_user": "default-user"}


def test_a_sync_round_trips_through_the_settings_file():
    settings = settings_from_mapping({"wi_syncs": [GOOD]})
    (sync,) = settings.wi_syncs
    assert sync == WiSyncConfig("Saffre", "main", "Places", "/srv/st", "default-user", enabled=False)
    assert sync.book_path == "/srv/st/data/default-user/worlds/Saffre.json"
    again = settings_from_mapping(settings.to_json())
    assert again.wi_syncs == settings.wi_syncs
    assert settings.to_json()["wi_syncs"] == [sync.to_json()]


def test_syncs_are_off_until_turned_on():
    assert Settings().wi_syncs == ()
    assert settings_from_mapping({"wi_syncs": [GOOD]}).wi_syncs[0].enabled is False
    assert settings_from_mapping({"wi_syncs": [{**GOOD, "enabled": True}]}).wi_syncs[0].enabled is True


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"book": ""}, "needs a book name"),
        ({"book": "a/b"}, "cannot hold"),
        ({"book": "..\\x"}, "cannot hold"),
        ({"book": "nul\x00"}, "cannot hold"),
        ({"vault": ""}, "vault to mirror is missing"),
        ({"folder": "../outside"}, "must be inside the vault"),
        ({"st_user": "../root"}, "not a SillyTavern user folder name"),
        ({"st_root": "relative/st"}, "absolute path"),
        ({"colour": "red"}, "unknown World Info sync setting"),
        ({"vault": 3}, "vault must be text"),
    ],
)
def test_a_bad_sync_is_refused_with_what_is_wrong(change, words):
    with pytest.raises(ConfigError, match=words):
        settings_from_mapping({"wi_syncs": [{**GOOD, **change}]})


def test_one_book_cannot_be_fed_by_two_folders():
    with pytest.raises(ConfigError, match="one folder only"):
        settings_from_mapping({"wi_syncs": [GOOD, {**GOOD, "folder": "People"}]})


def test_a_sync_list_must_be_a_list():
    with pytest.raises(ConfigError, match="must be a list"):
        settings_from_mapping({"wi_syncs": GOOD})
