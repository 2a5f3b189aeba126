import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("AUTOBATCH_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def programs():
    return SOURCE_DIR / "programs"


VMS = ["stack", "stackless", "reference"]
