"""Record and replay: the recording proxy (its h11 server, its upstream client), the
recording file, redaction, request matching, and replaying a recording as a model."""

from fake_anthropic.record.match import MATCH_MODES, MatchMode
from fake_anthropic.record.proxy import DEFAULT_UPSTREAM, RecordingProxy
from fake_anthropic.record.recorder import Recorder
from fake_anthropic.record.recording import Exchange, is_recording, load
from fake_anthropic.record.replay import Replay

__all__ = [
    "DEFAULT_UPSTREAM",
    "MATCH_MODES",
    "Exchange",
    "MatchMode",
    "Recorder",
    "RecordingProxy",
    "Replay",
    "is_recording",
    "load",
]
