"""Tests of the fake Anthropic API: the scripted model, recording and replay, its surface."""
