// PgConnection against a real PostgreSQL: statements prepared once per connection.

#include <string>

#include <gtest/gtest.h>

#include "storage/pg_connection.h"
#include "tests/support/postgres_server.h"

namespace egress::storage {
namespace {

// Verifies that a statement prepared while its table was empty (planned once, for any
// parameters) still reads through the index once the table has grown: with a plain generic
// plan it would scan the whole table on every run.
TEST(PgConnectionTest, AStatementPreparedOnAnEmptyTableUsesTheIndexLater) {
  PostgresServer::TestDatabase db = PostgresServer::FreshDatabase();
  if (db.not_installed) {
    GTEST_SKIP() << PostgresServer::kNotInstalled;
  }
  ASSERT_TRUE(db.error.empty()) << db.error;
  auto c = PgConnection::Connect(db.url);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  PgConnection& conn = **c;
  ASSERT_TRUE(conn.Run("CREATE TABLE t (k text COLLATE \"C\" PRIMARY KEY, v int8 NOT NULL)").ok());
  ASSERT_TRUE(conn.Run("VACUUM ANALYZE t").ok());
  // The first statement run on the connection: prepared as "egress_0" (pg_connection.h).
  const std::string read = "SELECT v FROM t WHERE k = ANY($1::text[])";
  auto empty = conn.Exec(read, PgParams().TextArray({"k1"}));
  ASSERT_TRUE(empty.has_value()) << empty.error().ToString();
  EXPECT_EQ(empty->rows(), 0);
  ASSERT_TRUE(conn.Run("INSERT INTO t SELECT 'k' || g, g FROM generate_series(1, 20000) g").ok());
  auto found = conn.Exec(read, PgParams().TextArray({"k7", "k19999"}));
  ASSERT_TRUE(found.has_value()) << found.error().ToString();
  EXPECT_EQ(found->rows(), 2);
  auto plan = conn.Exec("EXPLAIN EXECUTE egress_0('{k7}')");
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  std::string text;
  for (int i = 0; i < plan->rows(); ++i) {
    text.append(plan->Bytes(i, 0)).append("\n");
  }
  EXPECT_NE(text.find("Index"), std::string::npos) << text;
  EXPECT_EQ(text.find("Seq Scan"), std::string::npos) << text;
}

}  // namespace
}  // namespace egress::storage
