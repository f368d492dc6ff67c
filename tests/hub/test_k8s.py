"""deploy/k8s: the Zero to JupyterHub config is one the chart's values schema accepts (merged
over the chart's defaults, as Helm validates it), and the image's files agree with it. Whether
the image's requirements resolve is pip's answer, asked in .ci/hub (it needs the package index).
"""
import json
import os
import re

import pytest

from tests.course.stored import CHECKOUT

pytestmark = pytest.mark.no_hub
yaml = pytest.importorskip("yaml", reason="the chart check needs PyYAML: pip install -e '.[hub-tests]'")
jsonschema = pytest.importorskip("jsonschema", reason="the chart check needs jsonschema")

K8S = os.path.join(CHECKOUT.root, "deploy", "k8s")
DATA = os.path.join(os.path.dirname(__file__), "data")
CHART_HUB = "5.5.0"  # the chart's appVersion (data/README.md)


def load_json(name: str):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return json.load(f)


def config() -> dict:
    with open(os.path.join(K8S, "config.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def merged(defaults, values):
    """Helm's merge of values over a chart's defaults: maps merge key by key, a null removes
    the key, anything else replaces."""
    if not isinstance(defaults, dict) or not isinstance(values, dict):
        return values
    out = dict(defaults)
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(defaults.get(key), value)
    return out


def errors(values) -> list[str]:
    validator = jsonschema.Draft7Validator(load_json("z2jh-4.4.0-values.schema.json"))
    return sorted(f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(
        merged(load_json("z2jh-4.4.0-values.defaults.json"), values)))


def test_the_chart_accepts_the_config():
    assert errors(config()) == []


def test_the_schema_check_can_fail():
    assert errors({"cull": {"timeout": "an hour"}})  # a string where the chart wants a number
    assert errors({"singleuser": {"no_such_key": 1}})


def test_the_extra_config_is_python():
    for name, source in config()["hub"]["extraConfig"].items():
        compile(source, name, "exec")


def test_the_image_pins_the_charts_jupyterhub_and_ships_the_hub_settings():
    with open(os.path.join(K8S, "requirements.txt"), encoding="utf-8") as f:
        assert f"jupyterhub=={CHART_HUB}" in f.read().split()
    with open(os.path.join(K8S, "Dockerfile"), encoding="utf-8") as f:
        dockerfile = f.read()
    assert "deploy/k8s/requirements.txt" in dockerfile and "deploy/hub" in dockerfile
    source = config()["hub"]["extraConfig"]["ipu-course.py"]
    for role in re.findall(r"/opt/ipu-course/hub/jupyter/(\w+)", source.replace("{role}", "learner")):
        assert os.path.isdir(os.path.join(CHECKOUT.root, "deploy", "hub", "jupyter", role))
    mount = config()["singleuser"]["storage"]["extraVolumeMounts"][0]["mountPath"]
    assert config()["singleuser"]["extraEnv"]["IPU_COURSE_EXCHANGE"] == mount
