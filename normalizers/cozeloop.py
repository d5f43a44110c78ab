"""Coze Loop conventions (placeholder until the Coze Loop normalizer lands)."""

from __future__ import annotations

from normalizers.reading import Convention

CONVENTIONS: tuple[Convention, ...] = ()
