"""The trace and its views: steps and verdicts (story), the flow and replay, charts, exports, costs."""
