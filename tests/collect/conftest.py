from tests.support.judge_server import judge_server  # noqa: F401  (registers the fixture)
