// The rows of DaemonSettings() (service/daemon_settings.h): built once by
// daemon_settings.cc; other code reads the table through that header.
#ifndef LATENTD_SERVICE_INTERNAL_DAEMON_SETTINGS_TABLE_H_
#define LATENTD_SERVICE_INTERNAL_DAEMON_SETTINGS_TABLE_H_

#include <vector>

#include "service/daemon_settings.h"

namespace latentd::service::internal {

// Every setting (grouped: model, serving, ingest, cluster, graph, process)
// followed by one row per alias. Pure; call it once.
std::vector<SettingSpec> MakeSettingsTable();

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_DAEMON_SETTINGS_TABLE_H_
