"""Showing outside text in Markdown as it is: the rule lives in backend.analysis.markdown (the exported Markdown
report uses it too); pages reach it as widgets.plain and widgets.message."""

from backend.views.common import message, option, plain  # noqa: F401
