CREATE TABLE "Seed" (
  "id" INTEGER PRIMARY KEY
);

CREATE TABLE "StepAuthor" (
  "id" INTEGER PRIMARY KEY,
  "createdAt" REAL,
  "updatedAt" REAL,
  "name" TEXT NOT NULL DEFAULT '',
  "rating" INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX "StepAuthor_name_unique" ON "StepAuthor" ("name");

CREATE TABLE "StepBook" (
  "id" INTEGER PRIMARY KEY,
  "createdAt" REAL,
  "updatedAt" REAL,
  "title" TEXT NOT NULL DEFAULT 'untitled',
  "pages" INTEGER,
  "authorId" INTEGER,
  FOREIGN KEY ("authorId") REFERENCES "StepAuthor" ("id") ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  CONSTRAINT "StepBook_pages_positive" CHECK (pages >= 1),
  CONSTRAINT "StepBook_title_present" CHECK (length(title) > 0)
);
CREATE UNIQUE INDEX "StepBook_authorId_title_unique" ON "StepBook" ("authorId", "title");
CREATE INDEX "by_pages" ON "StepBook" ("pages");
