"""Placement prediction: which n x c placement runs a pattern fastest.

Module 2 of Peryshkova and Kurnosov 2018 (contention-aware placement).

Typical use::

    from commscope import predict
    model = predict.load_model("cluster.yaml")
    pattern = predict.build("alltoall", p=8, size=1 << 20, block=8)
    cost = predict.TableCost.from_tables(contention.tables(store.contentions(run)), "run 3")
    for pr in predict.rank_placements(model, pattern, cost):
        print(pr.placement.label, pr.time_s)

Modules: ``model`` (the cluster), ``model_yaml``, ``model_sources`` (hwloc, virtual cluster),
``placement`` and ``placement_files`` (where ranks run), ``patterns`` (step-wise transfers),
``channels`` (who shares which channel), ``cost`` (t(m, cf) tables, Hockney), ``answers``
(rendezvous answers waiting behind busy queues), ``rank`` (prediction and ranking),
``handoff`` (Slurm options, rankfile, hostfile).
"""

from commscope.predict.cost import (
    CostModel,
    HockneyCost,
    TableCost,
    combine,
)
from commscope.predict.handoff import hostfile, rankfile, slurm_args
from commscope.predict.model import LEVELS, ClusterModel, Link, Switch
from commscope.predict.model_sources import (
    model_from_hwloc,
    model_from_hwloc_file,
    model_from_vcluster,
)
from commscope.predict.model_yaml import load_model, model_from_dict
from commscope.predict.patterns import ALGORITHMS, Pattern, build
from commscope.predict.placement import Placement, enumerate_placements, regular
from commscope.predict.placement_files import from_hostfile, from_rankfile
from commscope.predict.rank import Prediction, predict, rank_placements

__all__ = [
    "ALGORITHMS",
    "LEVELS",
    "ClusterModel",
    "CostModel",
    "HockneyCost",
    "Link",
    "Pattern",
    "Placement",
    "Prediction",
    "Switch",
    "TableCost",
    "build",
    "combine",
    "enumerate_placements",
    "from_hostfile",
    "from_rankfile",
    "hostfile",
    "load_model",
    "model_from_dict",
    "model_from_hwloc",
    "model_from_hwloc_file",
    "model_from_vcluster",
    "predict",
    "rank_placements",
    "rankfile",
    "regular",
    "slurm_args",
]
