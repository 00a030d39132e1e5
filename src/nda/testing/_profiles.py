"""The conformance kit's Hypothesis profiles, ``nda-quick`` and ``nda-deep``.

Registered by the pytest plugin at start-up (and by the kit when used from Python), so
they exist whatever the project's own ``conftest.py`` does. Neither uses the example
database (a run writes nothing) and both report one bug per cell.

``nda-quick`` (the default): 8 generated cases per cell plus the deterministic edge
sweep, derandomized so that CI runs are reproducible; the whole catalog on one device
takes well under two minutes. ``nda-deep``: 200 random cases per cell, for a thorough
run before a release (expect tens of minutes). The ordering profile (``ordering``, and part of
``deep``; :mod:`nda.testing.conformance._ordering`) draws its programs with ``nda-quick``'s
settings (derandomized), 24 per family, and ``deep``'s 150 random ones per family.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, Verbosity, settings

__all__ = ["PROFILES", "register", "profile_settings"]

_COMMON = dict(
    database=None,
    deadline=None,
    report_multiple_bugs=False,
    print_blob=False,
    verbosity=Verbosity.quiet,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
)

PROFILES: dict[str, dict[str, object]] = {
    "nda-quick": dict(_COMMON, max_examples=8, derandomize=True),
    "nda-deep": dict(_COMMON, max_examples=200, derandomize=False),
}


def register() -> None:
    """Register (or re-register) ``nda-quick`` and ``nda-deep`` with Hypothesis."""
    for name, options in PROFILES.items():
        settings.register_profile(name, **options)  # type: ignore[arg-type]


def profile_settings(profile: str) -> settings:
    """The settings of ``profile``: ``"quick"``, ``"deep"``, ``"nda-quick"`` or ``"nda-deep"``
    (``"ordering"``, the ordering profile's, draws its programs as ``quick`` does)."""
    name = profile if profile.startswith("nda-") else f"nda-{'quick' if profile == 'ordering' else profile}"
    if name not in PROFILES:
        raise ValueError(f"unknown conformance profile {profile!r}; choose quick, deep or ordering")
    register()
    return settings.get_profile(name)


register()
