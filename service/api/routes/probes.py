"""GET /probes: the registered probes, their tools and parameter schemas."""

from __future__ import annotations

from fastapi import APIRouter

from cuprobe.probes import registry
from cuprobe.service.api.deps import Authorized
from cuprobe.service.api.schemas import ProbeList, ProbeView
from cuprobe.service.probing.admission import needs_gpu_by_default

router = APIRouter(prefix="/probes", tags=["probes"], dependencies=[Authorized])


@router.get("")
def list_probes() -> ProbeList:
    views = []
    for name in registry.available():
        probe = registry.get(name)
        views.append(
            ProbeView(
                name=name,
                summary=probe.summary,
                needs_gpu=needs_gpu_by_default(name),
                tools=list(probe.tools),
                params_schema=probe.Params.model_json_schema(),
            )
        )
    return ProbeList(probes=views)
