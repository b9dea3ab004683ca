// SPDX-License-Identifier: GPL-3.0-or-later
#include "spe/SpeRecordCsv.h"

#include <charconv>
#include <cstdint>

namespace auxscope::spe {

std::string_view speCsvHeader() {
    return "timestamp,time,cpu,pid,tid,context,contextIndex,hasContext,"
           "opClass,opPayload,isLoad,isStore,isBranch,isSve,isAtomic,isConditional,"
           "pc,pcEl,pcNs,hasPc,branchTarget,hasBranchTarget,prevBranchTarget,hasPrevBranchTarget,"
           "dataVa,dataVaTag,hasDataVa,dataPa,dataPaNs,dataPaCh,dataPaPat,hasDataPa,"
           "totalLatency,issueLatency,translationLatency,hasTotalLatency,hasIssueLatency,"
           "hasTranslationLatency,"
           "events,hasEvents,dataSource,hasDataSource";
}

namespace {

struct Row {
    char buf[1024];
    char* p = buf;
    void num(uint64_t v) {
        p = std::to_chars(p, buf + sizeof buf, v).ptr;
        *p++ = ',';
    }
    void snum(int64_t v) {
        p = std::to_chars(p, buf + sizeof buf, v).ptr;
        *p++ = ',';
    }
    void flag(bool b) {
        *p++ = b ? '1' : '0';
        *p++ = ',';
    }
};

}  // namespace

void appendSpeCsvRow(const SpeRecord& r, std::string& out) {
    Row w;
    w.num(r.timestamp);
    w.num(r.time);
    w.snum(r.cpu);
    w.snum(r.pid);
    w.snum(r.tid);
    w.num(r.context);
    w.num(r.contextIndex);
    w.flag(r.hasContext);
    w.num(uint8_t(r.opClass));
    w.num(r.opPayload);
    w.flag(r.isLoad);
    w.flag(r.isStore);
    w.flag(r.isBranch);
    w.flag(r.isSve);
    w.flag(r.isAtomic);
    w.flag(r.isConditional);
    w.num(r.pc);
    w.num(r.pcEl);
    w.flag(r.pcNs);
    w.flag(r.hasPc);
    w.num(r.branchTarget);
    w.flag(r.hasBranchTarget);
    w.num(r.prevBranchTarget);
    w.flag(r.hasPrevBranchTarget);
    w.num(r.dataVa);
    w.num(r.dataVaTag);
    w.flag(r.hasDataVa);
    w.num(r.dataPa);
    w.flag(r.dataPaNs);
    w.flag(r.dataPaCh);
    w.num(r.dataPaPat);
    w.flag(r.hasDataPa);
    w.num(r.totalLatency);
    w.num(r.issueLatency);
    w.num(r.translationLatency);
    w.flag(r.hasTotalLatency);
    w.flag(r.hasIssueLatency);
    w.flag(r.hasTranslationLatency);
    w.num(r.events);
    w.flag(r.hasEvents);
    w.num(r.dataSource);
    w.flag(r.hasDataSource);
    w.p[-1] = '\n';
    out.append(w.buf, size_t(w.p - w.buf));
}

}  // namespace auxscope::spe
