"""The pipeline picker: a preset, its switches and budgets, as sidebar widgets."""

from __future__ import annotations

import streamlit as st

from rag.config import PRESETS, PRESETS_HELP, TOGGLE_LABELS, Options, preset_label

NUMBERS = {
    "top_k": ("top_k", 1, 50, "Chunks retrieved per query."),
    "min_relevant": ("min_relevant", 1, 50, "Relevant chunks needed to answer without a caveat."),
    "max_rewrites": ("max_rewrites", 0, 5, "Rewrite budget for one run."),
}
"""Option -> (label, min, max, help) of the number inputs."""



def pipeline_picker(chosen: dict, prefix: str) -> None:
    """Preset, switches and budgets in the sidebar, as widgets keyed ``{prefix}{name}``.

    A preset sets the switches. ``chosen`` (a session-state dict, which outlives the widgets on other pages)
    holds ``preset`` and every option, and is updated in place.
    """
    for name, value in chosen.items():
        st.session_state.setdefault(f"{prefix}{name}", value)

    def apply_preset() -> None:
        for name, value in PRESETS[st.session_state[f"{prefix}preset"]][1].items():
            st.session_state[f"{prefix}{name}"] = value

    st.markdown("**Pipeline**")
    st.selectbox("Preset", list(PRESETS), key=f"{prefix}preset", on_change=apply_preset,
                 format_func=preset_label, help=PRESETS_HELP)
    for name, (label, help_text) in TOGGLE_LABELS.items():
        st.toggle(label, key=f"{prefix}{name}", help=help_text)
    for name, (label, low, high, help_text) in NUMBERS.items():
        st.number_input(label, min_value=low, max_value=high, step=1, key=f"{prefix}{name}",
                        help=help_text)
    chosen.update({name: st.session_state[f"{prefix}{name}"] for name in chosen})
    if any(chosen[k] != v for k, v in PRESETS[chosen["preset"]][1].items()):
        st.caption(f"Custom: changed from {preset_label(chosen['preset'])}.")


def default_pipeline(preset: str) -> dict:
    """``preset`` and every option of the picker at that preset's values."""
    defaults = Options()
    return {"preset": preset, **PRESETS[preset][1],
            **{k: getattr(defaults, k) for k in NUMBERS}}

