"""Clusters that do not exist yet, simulated with SimGrid/SMPI.

The approach of Rechistov et al. 2012 (cluster simulation), with SimGrid where they used Simics.

The engine is built with smpicc and run under smpirun on a platform written from the same
cluster model the prediction uses; its records land in the store like any other run.

Modules: ``params`` (simulation parameters of a model: link figures, SMPI factors, sweeps),
``platform`` (SimGrid platform XML and hostfile), ``smpi`` (SimGrid tools, the engine built
for SMPI, the job), ``calibrate`` (factors from a measured p2p run), ``agreement`` (simulated
vs measured, sweep sensitivity), ``netload`` (bytes and messages per link from a trace).
"""
