"""Engines that make the graph's judgments: the offline one, and (with a key) LLMs."""
