"""The dict every engine function returns, with per-layer tables as pandas DataFrames."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

import numpy as np


class Result(dict):
    """An engine's result: exactly the dict of the CLI's ``--json`` (same keys, one
    serializer), plus:

    - ``outputs``: the model's output tensors (``{name: ndarray}``) for engines that
      compute them (``puma.run``, ``puma.sim``, ``vpu.run``), else ``{}``;
    - ``frame(key)``: the list under ``key`` (default ``"layers"``) as a pandas DataFrame
      (pandas must be installed);
    - ``layers_frame()``: shorthand for ``frame("layers")``.

    >>> r = pimkit.xbar.map("zoo:lenet5", budget=1.0)
    >>> r["crossbars_used"], r.layers_frame().head()
    """

    outputs: Dict[str, np.ndarray]

    def __init__(self, data: Dict[str, Any], outputs: Optional[Dict[str, np.ndarray]] = None):
        super().__init__(data)
        self.outputs = dict(outputs or {})

    @classmethod
    def from_json(cls, text: str, outputs: Optional[Dict[str, np.ndarray]] = None) -> "Result":
        return cls(json.loads(text), outputs)

    def frame(self, key: str = "layers"):
        """The list of records under ``key`` as a DataFrame (nested dicts flattened with
        ``.``-joined column names)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("Result.frame() needs pandas: pip install pandas") from e
        rows = self.get(key)
        if rows is None:
            raise KeyError(f"the result has no '{key}' list (keys: {', '.join(self)})")
        if not isinstance(rows, list):
            raise TypeError(f"'{key}' is a {type(rows).__name__}, not a list of records")
        return pd.json_normalize(rows) if rows else pd.DataFrame()

    def layers_frame(self):
        """The per-layer table as a DataFrame."""
        return self.frame("layers")


def frame(rows: list):
    """A list of records (e.g. a sweep's rows) as a DataFrame."""
    import pandas as pd

    return pd.json_normalize(rows) if rows else pd.DataFrame()
