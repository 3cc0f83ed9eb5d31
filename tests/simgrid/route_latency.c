/* Loads a SimGrid platform and prints, for every ordered pair of its first N hosts,
 * "src dst links latency_s" as SimGrid routes them, then with "names" each link's name
 * (tests/simgrid/test_topology_smpi.py). */
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/dynar.h>

int main(int argc, char **argv)
{
  simgrid_init(&argc, argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s PLATFORM HOSTS [names]\n", argv[0]);
    return 2;
  }
  simgrid_load_platform(argv[1]);
  size_t count = sg_host_count();
  size_t wanted = (size_t)strtoul(argv[2], NULL, 10);
  int names = argc > 3 && strcmp(argv[3], "names") == 0;
  sg_host_t *hosts = sg_host_list();
  char name[64];
  for (size_t i = 0; i < wanted && i < count; i++)
    for (size_t j = 0; j < wanted && j < count; j++) {
      snprintf(name, sizeof name, "node%zu", i);
      const_sg_host_t a = sg_host_by_name(name);
      snprintf(name, sizeof name, "node%zu", j);
      const_sg_host_t b = sg_host_by_name(name);
      xbt_dynar_t links = xbt_dynar_new(sizeof(void *), NULL);
      sg_host_get_route(a, b, links);
      printf("%zu %zu %lu %.12g", i, j, xbt_dynar_length(links), sg_host_get_route_latency(a, b));
      for (unsigned long k = 0; names && k < xbt_dynar_length(links); k++)
        printf(" %s", sg_link_get_name(xbt_dynar_get_as(links, k, const_sg_link_t)));
      printf("\n");
      xbt_dynar_free(&links);
    }
  free(hosts);
  return 0;
}
