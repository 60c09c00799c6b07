"""An example cuprobe plug-in: a probe outside cuprobe, found through the `cuprobe.probes` entry point."""
